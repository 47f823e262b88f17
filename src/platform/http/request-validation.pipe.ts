import { ArgumentMetadata, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { dtoValidatorPackage, getMetadataStorage } from './dto-validation';

type Lookup = (target: object, schema: string, always: boolean, strictGroups: boolean, groups?: string[]) => unknown[];

interface Storage {
  getTargetValidationMetadatas: Lookup;
  addValidationMetadata(...args: unknown[]): void;
  addConstraintMetadata(...args: unknown[]): void;
  addValidationSchema(...args: unknown[]): void;
}

let remembered = false;

/**
 * class-validator looks up the rules of a class at every validation by walking every class it
 * knows (for inherited rules): a cost that grows with the application and is paid by every request.
 * The rules only change when a class is declared (a decorator runs), so the answers are kept per
 * class and options until then.
 */
export function rememberValidationRules(): void {
  if (remembered) return;
  remembered = true;
  const storage = getMetadataStorage() as unknown as Storage;
  const lookup = storage.getTargetValidationMetadatas.bind(storage);
  let known = new WeakMap<object, Map<string, unknown[]>>();
  storage.getTargetValidationMetadatas = (target, schema, always, strictGroups, groups) => {
    const key = `${schema}\u0000${always}\u0000${strictGroups}\u0000${groups?.join('\u0000') ?? ''}\u0000${groups?.length ?? -1}`;
    let byOptions = known.get(target);
    if (!byOptions) known.set(target, (byOptions = new Map()));
    let rules = byOptions.get(key);
    if (!rules) byOptions.set(key, (rules = lookup(target, schema, always, strictGroups, groups)));
    return rules;
  };
  for (const m of ['addValidationMetadata', 'addConstraintMetadata', 'addValidationSchema'] as const) {
    const add = storage[m].bind(storage);
    storage[m] = (...args: unknown[]) => {
      known = new WeakMap();
      add(...args);
    };
  }
}

/** A value with nothing in it: absent, or a plain object without properties. */
function isEmptyValue(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.keys(v).length === 0 && Object.getOwnPropertySymbols(v).length === 0;
}

/**
 * Nest's ValidationPipe with the rules remembered (above), and an empty value (a request without a
 * query string, an empty body) answered at once for a class already seen to accept it: the first
 * empty value of each class is validated in full, and only when that passed and produced what `new`
 * builds (the same properties, none set) are the later ones answered with `new` directly.
 */
export class RequestValidationPipe extends ValidationPipe {
  private readonly acceptsEmpty = new WeakMap<object, boolean>();

  constructor(options: ValidationPipeOptions) {
    // class-validator from the files the DTOs use (dto-validation.ts), never its whole index.
    super({ validatorPackage: dtoValidatorPackage, ...options });
    rememberValidationRules();
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const type = metadata.metatype as (new () => object) | undefined;
    const empty = type !== undefined && isEmptyValue(value) && this.toValidate(metadata);
    if (empty && this.acceptsEmpty.get(type) === true) return new type();
    const out: unknown = await super.transform(value, metadata);
    if (empty && !this.acceptsEmpty.has(type)) this.acceptsEmpty.set(type, out instanceof type && sameAsNew(out, new type()));
    return out;
  }
}

/** Whether a validated instance is what `new` builds: the same own properties, none of them set. */
function sameAsNew(out: object, fresh: object): boolean {
  const keys = Object.keys(out);
  const freshKeys = Object.keys(fresh);
  if (Object.getOwnPropertySymbols(out).length || Object.getOwnPropertySymbols(fresh).length) return false;
  if (keys.length !== freshKeys.length || keys.some((k, i) => k !== freshKeys[i])) return false;
  return keys.every((k) => (out as Record<string, unknown>)[k] === undefined && (fresh as Record<string, unknown>)[k] === undefined);
}
