// Group 10 of the whole suite's test files (test/support/test-groups.ts).
import { runGroup } from '../support/test-groups';

runGroup(10);
