import { Body, Controller, Delete, Get, Param, Patch, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Public } from '../decorators';
import { ScimDirectory } from './scim-directory.service';
import { listResponse, parseFilter, patchOperations, renderGroup, renderUser, ScimError, GROUP_SCHEMA, USER_SCHEMA } from './scim-wire';

const MAX_COUNT = 200;
const SCIM_JSON = 'application/scim+json; charset=utf-8';

/**
 * SCIM 2.0 provisioning (RFC 7643 core User and Group, RFC 7644 protocol): `/scim/v2/Users` and
 * `/scim/v2/Groups`, each tenant's identity provider authenticating with that tenant's bearer token
 * (OPENWOP_SCIM_TOKENS; none configured: every SCIM route is 404). The routes speak SCIM, not the
 * host API: their own authentication, SCIM error messages, `application/scim+json`, so they are
 * public to the host guard (rate-limited per address) and kept out of the protocol's OpenAPI.
 */
@ApiExcludeController()
@Controller('scim/v2')
export class ScimController {
  constructor(private readonly dir: ScimDirectory) {}

  @Public() @Get('ServiceProviderConfig')
  serviceProviderConfig(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    return this.run(req, reply, async () => ({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: MAX_COUNT },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: false },
      authenticationSchemes: [{ type: 'oauthbearertoken', name: 'Bearer token', description: 'The tenant\'s SCIM token (OPENWOP_SCIM_TOKENS).' }],
    }));
  }

  @Public() @Get('Users')
  listUsers(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Record<string, string>) {
    return this.run(req, reply, async (tenant, base) => {
      const { start, count } = page(q);
      const { rows, total } = await this.dir.listUsers(tenant, parseFilter(q.filter, ['userName', 'externalId']), start, count);
      const groups = await this.dir.groupsOf(tenant, rows.map((u) => u.id));
      return listResponse(rows.map((u) => renderUser(u, base, groups.filter((g) => g.members.includes(u.id)))), total, start);
    });
  }

  @Public() @Post('Users')
  createUser(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() body: unknown) {
    return this.run(req, reply, async (tenant, base) => renderUser(await this.dir.createUser(tenant, resource(body, USER_SCHEMA)), base), 201);
  }

  @Public() @Get('Users/:id')
  getUser(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string) {
    return this.run(req, reply, async (tenant, base) => {
      const u = await this.dir.getUser(tenant, id);
      return renderUser(u, base, await this.dir.groupsOf(tenant, [u.id]));
    });
  }

  @Public() @Put('Users/:id')
  replaceUser(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string, @Body() body: unknown) {
    return this.run(req, reply, async (tenant, base) => {
      const u = await this.dir.replaceUser(tenant, id, resource(body, USER_SCHEMA));
      return renderUser(u, base, await this.dir.groupsOf(tenant, [u.id]));
    });
  }

  @Public() @Patch('Users/:id')
  patchUser(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string, @Body() body: unknown) {
    return this.run(req, reply, async (tenant, base) => {
      const u = await this.dir.patchUser(tenant, id, patchOperations(body));
      return renderUser(u, base, await this.dir.groupsOf(tenant, [u.id]));
    });
  }

  @Public() @Delete('Users/:id')
  deleteUser(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string) {
    return this.run(req, reply, async (tenant) => this.dir.deleteUser(tenant, id).then(() => undefined), 204);
  }

  @Public() @Get('Groups')
  listGroups(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Query() q: Record<string, string>) {
    return this.run(req, reply, async (tenant, base) => {
      const { start, count } = page(q);
      const { rows, total } = await this.dir.listGroups(tenant, parseFilter(q.filter, ['displayName', 'externalId']), start, count);
      const users = await this.dir.usersById(tenant, [...new Set(rows.flatMap((g) => g.members))]);
      return listResponse(rows.map((g) => renderGroup(g, base, users)), total, start);
    });
  }

  @Public() @Post('Groups')
  createGroup(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Body() body: unknown) {
    return this.run(req, reply, async (tenant, base) => {
      const g = await this.dir.createGroup(tenant, resource(body, GROUP_SCHEMA));
      return renderGroup(g, base, await this.dir.usersById(tenant, g.members));
    }, 201);
  }

  @Public() @Get('Groups/:id')
  getGroup(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string) {
    return this.run(req, reply, async (tenant, base) => {
      const g = await this.dir.getGroup(tenant, id);
      return renderGroup(g, base, await this.dir.usersById(tenant, g.members));
    });
  }

  @Public() @Put('Groups/:id')
  replaceGroup(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string, @Body() body: unknown) {
    return this.run(req, reply, async (tenant, base) => {
      const g = await this.dir.replaceGroup(tenant, id, resource(body, GROUP_SCHEMA));
      return renderGroup(g, base, await this.dir.usersById(tenant, g.members));
    });
  }

  @Public() @Patch('Groups/:id')
  patchGroup(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string, @Body() body: unknown) {
    return this.run(req, reply, async (tenant, base) => {
      const g = await this.dir.patchGroup(tenant, id, patchOperations(body));
      return renderGroup(g, base, await this.dir.usersById(tenant, g.members));
    });
  }

  @Public() @Delete('Groups/:id')
  deleteGroup(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string) {
    return this.run(req, reply, async (tenant) => this.dir.deleteGroup(tenant, id).then(() => undefined), 204);
  }

  /** Authenticates the tenant's SCIM token, runs the operation, answers SCIM (errors as SCIM error messages). */
  private async run(req: FastifyRequest, reply: FastifyReply, op: (tenant: string, base: string) => Promise<unknown>, status = 200): Promise<void> {
    if (!this.dir.enabled) {
      await reply.status(404).type('application/json').send({ error: 'not_found', message: 'No such route.' });
      return;
    }
    try {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      const tenant = m ? this.dir.tenantOfToken(m[1]) : undefined;
      if (!tenant) {
        reply.header('www-authenticate', 'Bearer realm="scim"');
        throw new ScimError(401, 'A valid SCIM bearer token is required.');
      }
      const body = await op(tenant, `${req.protocol}://${req.headers.host}/scim/v2`);
      if (body === undefined) await reply.status(status).send();
      else await reply.status(status).type(SCIM_JSON).send(body);
    } catch (e) {
      if (!(e instanceof ScimError)) throw e;
      await reply.status(e.status).type(SCIM_JSON).send(e.body());
    }
  }
}

function page(q: Record<string, string>): { start: number; count: number } {
  const start = q.startIndex === undefined ? 1 : Number(q.startIndex);
  const count = q.count === undefined ? 100 : Number(q.count);
  if (!Number.isInteger(start) || !Number.isInteger(count)) throw new ScimError(400, 'startIndex and count are integers.', 'invalidValue');
  return { start: Math.max(1, start), count: Math.min(MAX_COUNT, Math.max(0, count)) };
}

function resource(body: unknown, schema: string): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ScimError(400, 'The body is a SCIM resource.', 'invalidSyntax');
  const b = body as Record<string, unknown>;
  if (!Array.isArray(b.schemas) || !b.schemas.includes(schema)) throw new ScimError(400, `The resource's schemas must include ${schema}.`, 'invalidSyntax');
  return b;
}
