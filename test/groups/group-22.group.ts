// Group 22 of the whole suite's test files (test/support/test-groups.ts).
import { runGroup } from '../support/test-groups';

runGroup(22);
