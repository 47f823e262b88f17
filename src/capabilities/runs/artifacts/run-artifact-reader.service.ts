import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../../platform/errors/domain-error';
import type { Principal } from '../../../platform/identity/principal';
import { RunsService } from '../runs.service';
import { RunArtifactsService, StoredArtifact } from './run-artifacts.service';

/**
 * A run's artifact as a caller reads it, whichever transport asks (`GET
 * /v1/runs/{runId}/artifacts/{artifactId}`, gRPC GetArtifact): the run is looked up first, so an
 * unknown or foreign run is its 404, then the artifact.
 */
@Injectable()
export class RunArtifactReader {
  constructor(
    private readonly runs: RunsService,
    private readonly artifacts: RunArtifactsService,
  ) {}

  /** The bytes of one artifact of a run the principal may see; 404 for an unknown or foreign run or artifact. */
  async read(p: Principal, runId: string, artifactId: string): Promise<StoredArtifact> {
    await this.runs.state(p, runId); // unknown and foreign runs (other tenant or workspace): 404
    const found = await this.artifacts.read(p.tenant, runId, artifactId);
    if (!found) throw new NotFoundError('No such artifact.', { artifactId });
    return found;
  }
}
