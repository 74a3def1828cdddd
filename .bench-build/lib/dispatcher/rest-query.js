// Query parameters of the HTTP+JSON binding (spec §11.5): the fields of a request that
// has no body, read by the request's schema. Numbers and booleans are decoded from their
// literals, repeated fields may be repeated or comma-separated; any other string is passed
// on as it is, so that the method's compiled validator rejects a bad value under the
// parameter's name exactly as it would in a JSON body.
import Type from 'typebox';
import { invalidParams } from '../errors/index.js';
const DECIMAL = /^-?\d+(\.\d+)?$/;
function scalar(schema, text) {
    if ((Type.IsInteger(schema) || Type.IsNumber(schema)) && DECIMAL.test(text))
        return Number(text);
    if (Type.IsBoolean(schema) && (text === 'true' || text === 'false'))
        return text === 'true';
    return text;
}
/** Names the schema does not know are ignored, as unknown fields are (spec §5.7). */
export function queryDecoder(schema) {
    const fields = Object.entries(schema.properties);
    return (query) => {
        const params = {};
        const violations = [];
        for (const [name, field] of fields) {
            const raw = query[name];
            if (raw === undefined)
                continue;
            if (Type.IsArray(field)) {
                params[name] = [raw].flat().flatMap(value => value.split(',')).map(item => scalar(field.items, item));
            }
            else if (Array.isArray(raw)) {
                violations.push({ field: name, description: 'must not be repeated' });
            }
            else {
                params[name] = scalar(field, raw);
            }
        }
        if (violations.length > 0)
            throw invalidParams(violations);
        return params;
    };
}
//# sourceMappingURL=rest-query.js.map