export * from './extension-point';
export * from './plugin';
export * from './artifacts';
