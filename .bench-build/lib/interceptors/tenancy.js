export function tenancy(options) {
    const header = options.header?.toLowerCase();
    return {
        async before(context, call) {
            const resolved = await options.resolve?.(context, call);
            if (resolved !== undefined && resolved !== '') {
                context.tenant = resolved;
                return;
            }
            const fromHeader = header === undefined ? undefined : context.serviceParams[header];
            if (context.tenant === '' && fromHeader !== undefined && fromHeader !== '')
                context.tenant = fromHeader;
        }
    };
}
//# sourceMappingURL=tenancy.js.map