# Opens 20 MCP sessions on a gateway (URL ending in /mcp), each searching
# eight times with a 4 MB query, then ending; read the gateway's VmHWM after.
# Used for the learning row of docs/reliability.md.
import json, sys, urllib.request
url = sys.argv[1]
q = "read the entire knowledge graph " * (4_000_000 // 32)
q = q[:4_000_000]
def post(body, sid=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid: h["Mcp-Session-Id"] = sid
    h["MCP-Protocol-Version"] = "2025-06-18"
    r = urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(body).encode(), headers=h))
    return r.headers.get("Mcp-Session-Id"), r.read()
for i in range(20):
    sid, _ = post({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rss","version":"1"}}})
    post({"jsonrpc":"2.0","method":"notifications/initialized"}, sid)
    for j in range(8):
        post({"jsonrpc":"2.0","id":2+j,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":q}}}, sid)
    urllib.request.urlopen(urllib.request.Request(url, method="DELETE", headers={"Mcp-Session-Id": sid}))
print("done")
