import { Controller, Get, Post } from '@nestjs/common';
import { AnyScope, Public, Scopes } from '../../platform/identity/decorators';
import type { UnaryEngineMethod } from './engine-method';
import { peerAddress, resolveOperation } from './engine-service';

describe('peerAddress', () => {
  it('is the client address of a grpc-js peer string', () => {
    expect(peerAddress('127.0.0.1:50123')).toBe('127.0.0.1');
    expect(peerAddress('::1:50123')).toBe('::1');
    expect(peerAddress('[::1]:50123')).toBe('::1');
    expect(peerAddress('::ffff:10.1.2.3:50123')).toBe('10.1.2.3');
    expect(peerAddress('unknown')).toBe('unknown');
  });
});

@Controller()
class Twins {
  @Scopes('a:read')
  @Get('/all')
  all(): void {}

  @Scopes('a:read')
  @AnyScope('b:manage', 'c:create')
  @Post('/any')
  any(): void {}

  @Scopes()
  @AnyScope('b:manage')
  @Post('/only-any')
  onlyAny(): void {}

  @Public()
  @Get('/public')
  open(): void {}

  @Get('/undeclared')
  undeclared(): void {}

  @AnyScope('b:manage')
  @Post('/any-without-scopes')
  anyWithoutScopes(): void {}

  @Public()
  @AnyScope('b:manage')
  @Post('/public-any')
  publicAny(): void {}

  @Scopes('a:read')
  @AnyScope()
  @Post('/empty-any')
  emptyAny(): void {}
}

const method = (handler: string): UnaryEngineMethod => ({ name: 'RegisterWebhook', kind: 'unary', rest: { controller: Twins, handler }, handle: async () => ({}) });

describe('resolveOperation: the twin route\'s scopes, as the guard enforces them', () => {
  it('reads @Scopes and the any-of @AnyScope list', () => {
    expect(resolveOperation(method('all'))).toMatchObject({ httpMethod: 'GET', path: '/all', scopes: ['a:read'] });
    expect(resolveOperation(method('all')).anyOfScopes).toBeUndefined();
    expect(resolveOperation(method('any'))).toMatchObject({ httpMethod: 'POST', scopes: ['a:read'], anyOfScopes: ['b:manage', 'c:create'] });
    expect(resolveOperation(method('onlyAny'))).toMatchObject({ scopes: [], anyOfScopes: ['b:manage'] });
    expect(resolveOperation(method('open'))).toMatchObject({ scopes: [] });
  });

  it('fails closed: a twin whose scopes the guard could not enforce stops the start', () => {
    expect(() => resolveOperation(method('undeclared'))).toThrow(/declares no scopes/);
    expect(() => resolveOperation(method('anyWithoutScopes'))).toThrow(/declares no scopes/);
    expect(() => resolveOperation(method('publicAny'))).toThrow(/is public and declares any-of scopes/);
    expect(() => resolveOperation(method('emptyAny'))).toThrow(/malformed any-of scope list/);
    expect(() => resolveOperation(method('missing'))).toThrow(/is not a route handler/);
  });
});
