import { CLAIM_NAMED_NEWCOMERS_SQL, namedRun } from './run-newcomer-claim';

describe("the newcomers' claim by id", () => {
  it('reads the run a notification names, and nothing from one that names none', () => {
    const id = '0f8b2c3e-4d5a-4b6c-8d7e-9f0a1b2c3d4e';
    expect(namedRun(`${id} tenant-a`)).toEqual({ runId: id, tenant: 'tenant-a' });
    // A tenant may hold spaces: everything after the first one is the tenant.
    expect(namedRun(`${id} a b`)).toEqual({ runId: id, tenant: 'a b' });
    for (const payload of [undefined, '', id, `${id} `, `${id}x tenant`, `not-a-uuid-at-all-but-36-characters! tenant`]) expect(namedRun(payload)).toBeUndefined();
  });

  it('its statement (compared with the committed snapshot)', () => {
    expect(CLAIM_NAMED_NEWCOMERS_SQL).toMatchSnapshot();
  });
});
