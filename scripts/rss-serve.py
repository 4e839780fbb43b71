# Starts `toolshelf serve --catalog FILE` over stdio, searches it N times
# (five everyday requests in turn), and prints the gateway's peak and
# current RSS. Used for serve's row of docs/benchmarks.md's memory table:
#   python3 scripts/rss-serve.py ./toolshelf /tmp/toolshelf-scale/catalog-10000.json 200
import json, subprocess, sys
binary, catalog, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = subprocess.Popen([binary, "serve", "--catalog", catalog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def ask(msg):
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()
    if "id" in msg:
        reply = json.loads(p.stdout.readline())
        if "error" in reply:
            sys.exit("serve: " + json.dumps(reply["error"]))
ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rss", "version": "1"}}})
ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
queries = ["create a github issue", "send a slack message", "read a file", "query the database", "list calendar events"]
for i in range(n):
    ask({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call", "params": {"name": "search_tools", "arguments": {"query": queries[i % len(queries)]}}})
status = dict(l.split(":", 1) for l in open(f"/proc/{p.pid}/status").read().splitlines() if ":" in l)
print(f"peak RSS {int(status['VmHWM'].split()[0]) // 1024} MiB, now {int(status['VmRSS'].split()[0]) // 1024} MiB ({int(status['RssFile'].split()[0]) // 1024} MiB of it file pages: the binary)")
p.kill()
