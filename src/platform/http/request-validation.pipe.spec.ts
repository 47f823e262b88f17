import 'reflect-metadata';
import { ArgumentMetadata, BadRequestException, ValidationPipe } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Min } from 'class-validator';
import { REQUEST_VALIDATION } from '../platform.module';
import { RequestValidationPipe } from './request-validation.pipe';

class OptionalQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  after?: number;

  @IsOptional()
  @IsString()
  mode?: string;
}

class RequiredBody {
  @IsString()
  name!: string;
}

class WithDefault {
  @IsOptional()
  @IsInt()
  limit: number = 10;
}

class Extended {
  @IsOptional()
  @IsString()
  a?: string;

  b?: unknown;
}

const query = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'query', metatype });

describe('RequestValidationPipe', () => {
  // Counts the validations done in full (Nest's own pipe), which the shortcut skips.
  let full: jest.SpyInstance;
  beforeEach(() => {
    full = jest.spyOn(ValidationPipe.prototype, 'transform');
  });
  afterEach(() => full.mockRestore());

  it('answers an empty value as the full validation did, and only validates the first one of a class', async () => {
    const pipe = new RequestValidationPipe(REQUEST_VALIDATION);
    const first = await pipe.transform(Object.create(null), query(OptionalQuery));
    const second = await pipe.transform({}, query(OptionalQuery));
    const third = await pipe.transform(undefined, query(OptionalQuery));
    expect(full).toHaveBeenCalledTimes(1);
    for (const v of [first, second, third]) {
      expect(v).toBeInstanceOf(OptionalQuery);
      expect(v).toEqual(first);
    }
    expect(second).not.toBe(first);
    // A value with something in it is validated in full, as always.
    await expect(pipe.transform({ after: '3' }, query(OptionalQuery))).resolves.toEqual(Object.assign(new OptionalQuery(), { after: 3 }));
    await expect(pipe.transform({ after: '-1' }, query(OptionalQuery))).rejects.toBeInstanceOf(BadRequestException);
    await expect(pipe.transform({ other: 'x' }, query(OptionalQuery))).rejects.toBeInstanceOf(BadRequestException);
    expect(full).toHaveBeenCalledTimes(4);
  });

  it('keeps refusing an empty value of a class that needs something, and validates it every time', async () => {
    const pipe = new RequestValidationPipe(REQUEST_VALIDATION);
    for (let i = 0; i < 3; i++) await expect(pipe.transform({}, { type: 'body', metatype: RequiredBody })).rejects.toBeInstanceOf(BadRequestException);
    expect(full).toHaveBeenCalledTimes(3);
  });

  it('does not answer with `new` a class whose instances start with something set', async () => {
    const pipe = new RequestValidationPipe(REQUEST_VALIDATION);
    for (let i = 0; i < 2; i++) await expect(pipe.transform({}, query(WithDefault))).resolves.toEqual(new WithDefault());
    expect(full).toHaveBeenCalledTimes(2);
  });

  it('sees a rule added to a class after the class was validated', async () => {
    const pipe = new RequestValidationPipe(REQUEST_VALIDATION);
    await expect(pipe.transform({ a: 'x', b: 1 }, query(Extended))).rejects.toBeInstanceOf(BadRequestException);
    // Declared later (as a decorator would when a module is loaded): the remembered rules are dropped.
    IsOptional()(Extended.prototype, 'b');
    IsInt()(Extended.prototype, 'b');
    await expect(pipe.transform({ a: 'x', b: 1 }, query(Extended))).resolves.toEqual(Object.assign(new Extended(), { a: 'x', b: 1 }));
    await expect(pipe.transform({ a: 'x', b: 'one' }, query(Extended))).rejects.toBeInstanceOf(BadRequestException);
  });
});
