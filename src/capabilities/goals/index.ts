/** The goals capability as other capabilities see it: its module and its services. */
export { GoalsModule } from './goals.module';
export { GoalsService } from './goals.service';
export { GoalContinuationService } from './goal-continuation.service';
export { GoalWorkerSelector } from './goal-worker-selector.service';
export { GoalSchedulerService } from './goal-scheduler.service';
export { GoalExtensionsService } from './goal-extensions.service';
export { GoalClock } from './goal-clock';
