import { Compile } from 'typebox/compile';
/** `/message/parts/0/text` → `message.parts[0].text` (google.rpc.BadRequest field path style). */
function fieldPath(instancePath, extra) {
    const segments = instancePath.split('/').slice(1);
    if (extra !== undefined)
        segments.push(extra);
    let path = '';
    for (const segment of segments) {
        const name = segment.replace(/~1/g, '/').replace(/~0/g, '~');
        path += /^\d+$/.test(name) ? `[${name}]` : (path === '' ? name : `.${name}`);
    }
    return path;
}
export function compile(schema, root) {
    const compiled = Compile(schema);
    return {
        check(value) {
            if (compiled.Check(value))
                return { ok: true, value: value };
            const violations = [];
            const seen = new Set();
            for (const error of compiled.Errors(value)) {
                const missing = error.keyword === 'required'
                    ? error.params.requiredProperties
                    : [undefined];
                for (const property of missing) {
                    let field = fieldPath(error.instancePath, property);
                    if (root !== undefined)
                        field = field === '' ? root : `${root}.${field}`;
                    // A REQUIRED string that is empty is absent in ProtoJSON: say so.
                    const empty = error.keyword === 'minLength' && error.params.limit === 1;
                    const description = property !== undefined || empty ? 'is required' : error.message;
                    const key = `${field}\u0000${description}`;
                    if (seen.has(key))
                        continue;
                    seen.add(key);
                    violations.push({ field, description });
                }
            }
            return { ok: false, violations };
        }
    };
}
//# sourceMappingURL=validate.js.map