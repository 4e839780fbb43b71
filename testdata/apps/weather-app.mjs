// An MCP Apps server (io.modelcontextprotocol/ui) for toolshelf's tests,
// built as the ext-apps documentation shows: a tool whose _meta.ui names
// a ui:// resource, the HTML of that resource, and a second tool with the
// older flat key. $APP_VERSION changes the HTML (an app that changed).
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { registerAppTool, registerAppResource, RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from "@modelcontextprotocol/ext-apps/server";
import { z } from "zod";

const version = process.env.APP_VERSION ?? "1";
const server = new McpServer({ name: "weather-app", version: "1.0.0" });

const html = (title) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head>` +
  `<body><h1>${title}</h1><div id="forecast" data-version="${version}"></div></body></html>`;

registerAppResource(server, "Forecast view", "ui://weather/forecast.html", { description: "A chart of the forecast" },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: RESOURCE_MIME_TYPE, text: html("Forecast") }] }));
registerAppResource(server, "Radar view", "ui://weather/radar.html", { description: "The rain radar" },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: RESOURCE_MIME_TYPE, text: html("Radar") }] }));

registerAppTool(server, "show_forecast", {
  title: "Show the forecast",
  description: "Show the weather forecast for a city as an interactive chart.",
  inputSchema: { city: z.string().describe("The city") },
  _meta: { ui: { resourceUri: "ui://weather/forecast.html" } },
}, async ({ city }) => ({
  content: [{ type: "text", text: `Forecast for ${city}: sunny, 21°C` }],
  structuredContent: { city, temperature: 21 },
  _meta: { ui: { resourceUri: "ui://weather/forecast.html" } },
}));

registerAppTool(server, "show_radar", {
  description: "Show the rain radar around a city.",
  inputSchema: { city: z.string() },
  _meta: { [RESOURCE_URI_META_KEY]: "ui://weather/radar.html" },
}, async ({ city }) => ({ content: [{ type: "text", text: `Radar for ${city}: dry` }] }));

await server.connect(new StdioServerTransport());
