export * from './extension-point';
export * from './plugin';
export * from './artifacts';
export * from './tool-source';
export * from './portability';
export * from './connections';
export * from './proposals';
export * from './goals';
