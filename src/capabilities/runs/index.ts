/** The runs capability as other capabilities see it: its module and its services. */
export { RunsModule } from './runs.module';
export { RunsService } from './runs.service';
export { RunEngineService } from './run-engine.service';
export { WorkflowResolver } from './workflow-resolver.service';
export { InterruptsService } from './interrupts/interrupts.service';
export { RunForkService } from './run-fork.service';
