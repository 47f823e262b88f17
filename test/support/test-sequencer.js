/* eslint-disable */
'use strict';
// The order of a grouped run (test/support/test-groups.ts): the groups by their planned weight, heaviest
// first (group-01 holds the heaviest files), then the files that run on their own, so no heavy group is
// left to start last while the other worker has finished. Other runs keep Jest's own order.
const Sequencer = require('@jest/test-sequencer').default;

class GroupsFirst extends Sequencer {
  sort(tests) {
    if (process.env.OPENWOP_TEST_GROUPS !== '1') return super.sort(tests);
    const rank = (t) => {
      const m = /group-(\d+)\.group\.ts$/.exec(t.path);
      return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER;
    };
    return [...tests].sort((a, b) => rank(a) - rank(b) || a.path.localeCompare(b.path));
  }
}

module.exports = GroupsFirst;
