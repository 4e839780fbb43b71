// A server that serves the skills in the folder its first argument names
// by the MCP Skills extension (SEP-2640), built on the published MCP
// TypeScript SDK's own implementation of it, with one tool beside them.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const root = process.argv[2];
if (!root) {
  console.error('usage: skills-server.mjs SKILLS_FOLDER');
  process.exit(2);
}
const server = new McpServer({ name: 'skills', version: '1.0.0' });
server.registerTool('tag_release', { description: 'Tag a release of the repository at a commit' }, async () => ({
  content: [{ type: 'text', text: 'tagged' }],
}));
const skills = await loadSkills(root, { strict: true, cacheHint: { ttlMs: 60000, cacheScope: 'public' } });
skills.attach(server);
await server.connect(new StdioServerTransport());
