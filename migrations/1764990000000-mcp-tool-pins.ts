import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `mcp_tool_pin`: the MCP tool definitions each tenant has accepted (name, description and
 * input/output schemas, as a digest), recorded when the tenant's catalog first sees a tool. A server
 * that later serves a different definition leaves the tool `held` until an operator approves it.
 */
export class McpToolPins1764990000000 implements MigrationInterface {
  name = 'McpToolPins1764990000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "mcp_tool_pin" (
      "tenant" text NOT NULL,
      "server_id" text NOT NULL,
      "tool_name" text NOT NULL,
      "approved_digest" text NOT NULL,
      "observed_digest" text NOT NULL,
      "state" text NOT NULL,
      "first_seen_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "changed_at" TIMESTAMP WITH TIME ZONE,
      "approved_at" TIMESTAMP WITH TIME ZONE,
      "approved_by" text,
      CONSTRAINT "PK_344618634e55b4f459a217bce63" PRIMARY KEY ("tenant", "server_id", "tool_name"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "mcp_tool_pin"`);
  }
}
