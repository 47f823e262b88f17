import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { ToolDescriptor, ToolEgress, ToolReplayPolicy, ToolSafetyTier } from '@openwop-host/plugin-sdk';
import { SCHEMAS_ROOT } from '../../platform/schemas/schema-registry';
import { toolAnnotations, toV2Descriptor } from './v2-descriptor';

const schema = JSON.parse(fs.readFileSync(path.join(SCHEMAS_ROOT, 'openwop', 'v2', 'tool-descriptor.schema.json'), 'utf8')) as Record<string, unknown>;
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema);

const TIERS: ToolSafetyTier[] = ['pure', 'read', 'write', 'exec'];
const REPLAY: Array<ToolReplayPolicy | undefined> = ['deterministic', 'idempotent', 'non-deterministic', undefined];
const EGRESS: Array<ToolEgress | undefined> = ['none', 'safe-fetch', 'host-mediated', 'host-owned', undefined];

/** RFC 0204 §D.12 written out row by row (not by the code under test's expressions). */
const READ_ONLY: Record<ToolSafetyTier, boolean> = { pure: true, read: true, write: false, exec: false };
const DESTRUCTIVE: Record<ToolSafetyTier, boolean> = { pure: false, read: false, write: true, exec: true };
const IDEMPOTENT = new Map<ToolReplayPolicy | undefined, boolean>([['deterministic', true], ['idempotent', true], ['non-deterministic', false], [undefined, false]]);
const OPEN_WORLD = new Map<ToolEgress | undefined, boolean>([['none', false], ['safe-fetch', true], ['host-mediated', true], ['host-owned', true], [undefined, true]]);

function descriptor(safetyTier: ToolSafetyTier, replayPolicy: ToolReplayPolicy | undefined, egress: ToolEgress | undefined): ToolDescriptor {
  const d: ToolDescriptor = { toolId: `t:${safetyTier}.${replayPolicy ?? 'none'}.${egress ?? 'none'}`, source: safetyTier === 'exec' ? 'host-extension' : 'node-pack', safetyTier, title: 'A tool' };
  if (replayPolicy !== undefined) d.replayPolicy = replayPolicy;
  if (egress !== undefined) d.egress = egress;
  return d;
}

const COMBOS = TIERS.flatMap((t) => REPLAY.flatMap((r) => EGRESS.map((e) => [t, r, e] as const)));

describe('RFC 0204 annotations (v2 tool descriptor)', () => {
  it('covers all 80 combinations of tier × replay policy × egress', () => {
    expect(COMBOS).toHaveLength(80);
  });

  it.each(COMBOS)('%s / %s / %s: the table, all four hints, no title, valid against the v2 schema', (tier, replay, egress) => {
    const d = descriptor(tier, replay, egress);
    const v2 = toV2Descriptor(d);
    expect(v2.annotations).toEqual({
      readOnlyHint: READ_ONLY[tier],
      destructiveHint: DESTRUCTIVE[tier],
      idempotentHint: IDEMPOTENT.get(replay),
      openWorldHint: OPEN_WORLD.get(egress),
    });
    expect(Object.keys(v2.annotations).sort()).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint']);
    expect(v2.annotations).not.toHaveProperty('title');
    // The v1 fields travel unchanged.
    const { annotations: _a, ...rest } = v2;
    expect(rest).toEqual(d);
    expect(validate(v2)).toBe(true);
  });

  it('the v2 schema refuses a mis-derived hint (the test would catch a wrong table)', () => {
    const d = toV2Descriptor(descriptor('write', 'idempotent', 'none'));
    expect(validate({ ...d, annotations: { ...d.annotations, readOnlyHint: true } })).toBe(false);
    expect(validate({ ...d, annotations: { ...d.annotations, openWorldHint: true } })).toBe(false);
    const { openWorldHint: _o, ...three } = d.annotations;
    expect(validate({ ...d, annotations: three })).toBe(false);
  });

  it('reads only the host-assigned fields: hints a source put on a descriptor are replaced', () => {
    const spoofed = { ...descriptor('write', 'non-deterministic', 'host-mediated'), annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false, title: 'x' } } as unknown as ToolDescriptor;
    expect(toV2Descriptor(spoofed).annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    expect(toolAnnotations({ safetyTier: 'write' })).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
  });
});
