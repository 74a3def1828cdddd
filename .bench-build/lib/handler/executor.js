export {};
//# sourceMappingURL=executor.js.map