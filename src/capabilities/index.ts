import type { Type } from '@nestjs/common';

/** The capability modules the host mounts. Each contributes its routes, advertisers and providers. */
export const CAPABILITY_MODULES: Type<unknown>[] = [];
