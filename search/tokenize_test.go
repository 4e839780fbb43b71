package search

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  --  ", nil},
		{"mcp__github__create_issue", []string{"mcp", "github", "create", "issue"}},
		{"NotebookEdit", []string{"notebook", "edit"}},
		{"MCPTool", []string{"mcp", "tool"}},
		{"parseHTTPResponse", []string{"parse", "http", "response"}},
		{"API-post-search", []string{"api", "post", "search"}},
		{"v2Beta", []string{"v2", "beta"}},
		{"get_s3_object", []string{"get", "s3", "object"}},
		{"base64Encode", []string{"base64", "encode"}},
		{"EC2Instance", []string{"ec2", "instance"}},
		{"Café naïve", []string{"cafe", "naive"}},
		{"ﬁle", []string{"file"}}, // NFKD splits the ligature
		{"Read the file, please!", []string{"read", "the", "file", "please"}},
		// CJK runs give their overlapping pairs; a lone character itself;
		// Hangul stays in syllables (NFKD would split them into jamo).
		{"日本語のツール", []string{"日本", "本語", "語の", "のツ", "ツー", "ール"}},
		{"上海的天气", []string{"上海", "海的", "的天", "天气"}},
		{"거실 에어컨 실행", []string{"거실", "에어", "어컨", "실행"}},
		{"MCP用の字", []string{"mcp", "用の", "の字"}},
		{"a 字 b", []string{"a", "字", "b"}},
		{"İstanbul", []string{"istanbul"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Tokenize(tt.in)); diff != "" {
			t.Errorf("Tokenize(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"mcp__github__create_issue", "MCPTool", "Café", "a1B2c3", "\xff\xfe", "ǅungla", "ﬀ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokenize(s)
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("Tokenize(%q) has an empty token: %q", s, toks)
			}
			for _, r := range tok {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("Tokenize(%q) = %q: token %q has %q", s, toks, tok, r)
				}
			}
			if tok != strings.ToLower(tok) {
				t.Fatalf("Tokenize(%q): token %q is not lower case", s, tok)
			}
		}
		// Tokenising is idempotent on its own output.
		again := Tokenize(strings.Join(toks, " "))
		if len(again) < len(toks) {
			t.Fatalf("Tokenize(join(Tokenize(%q))) = %q, lost tokens of %q", s, again, toks)
		}
	})
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in      string
		want    Query
		wantErr string
	}{
		{in: "slack send", want: Query{Text: "slack send", Terms: []Term{{"slack", false}, {"send", false}}}},
		{in: "  +slack  send ", want: Query{Text: "+slack  send", Terms: []Term{{"slack", true}, {"send", false}}}},
		{in: "+pull-request", want: Query{Text: "+pull-request", Terms: []Term{{"pull", true}, {"request", true}}}},
		{in: "select:a, b ,,c", want: Query{Text: "select:a, b ,,c", Select: []string{"a", "b", "c"}}},
		{in: "SELECT:Read", want: Query{Text: "SELECT:Read", Select: []string{"Read"}}},
		{in: "mcp__github", want: Query{Text: "mcp__github", Prefix: "mcp__github", Terms: []Term{{"mcp", false}, {"github", false}}}},
		{in: "MCP__GitHub create", want: Query{Text: "MCP__GitHub create", Prefix: "mcp__github", Terms: []Term{{"mcp", false}, {"git", false}, {"hub", false}, {"create", false}}}},
		{in: "+", want: Query{Text: "+"}, wantErr: ErrNoLetters.Error()},
		{in: "   ", want: Query{}, wantErr: "query is empty"},
		{in: "!!! ??? --", want: Query{Text: "!!! ??? --"}, wantErr: "Query must contain at least one letter or number."},
		{in: "select:, ,", want: Query{Text: "select:, ,"}, wantErr: "select: needs at least one tool name"},
	}
	for _, tt := range tests {
		got, err := ParseQuery(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseQuery(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseQuery(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"slack send", "+github pull request", "select:a,b", "mcp__x", "", "+", "select:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if err != nil {
			return
		}
		if q.Select == nil && len(q.Terms) == 0 {
			t.Fatalf("ParseQuery(%q) succeeded with nothing to search: %+v", s, q)
		}
		for _, n := range q.Select {
			if n == "" || n != strings.TrimSpace(n) {
				t.Fatalf("ParseQuery(%q): select name %q is blank or untrimmed", s, n)
			}
		}
		if q.Select == nil && !hasLetterOrDigit(s) {
			t.Fatalf("ParseQuery(%q) accepted a query without letters or digits", s)
		}
	})
}

func TestParseQueryPhoneNumbers(t *testing.T) {
	q, err := ParseQuery("send an SMS to +61423456789 +slack")
	if err != nil {
		t.Fatal(err)
	}
	var req []string
	for _, t := range q.Terms {
		if t.Required {
			req = append(req, t.Text)
		}
	}
	if len(req) != 1 || req[0] != "slack" {
		t.Errorf("required terms = %v, want [slack]", req)
	}
}

// The ASCII fast path splits exactly as the general scanner does.
func FuzzScanASCII(f *testing.F) {
	for _, s := range []string{"createPullRequest", "MCPTool v2Beta", "API-post-search", "s3_bucket EC2", "HTTPServer2Go", "a", "", "__x__", "ABC", "aB1cD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var fast, slow [][2]int
		if !scanASCII(s, func(a, b int) { fast = append(fast, [2]int{a, b}) }) {
			if isASCII(s) {
				t.Errorf("%q: the ASCII scan gave up on ASCII text", s)
			}
			return
		}
		scanTokens(s, func(a, b int) { slow = append(slow, [2]int{a, b}) })
		if fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Errorf("%q: ascii %v, general %v", s, fast, slow)
		}
	})
}

func TestShortForms(t *testing.T) {
	for w, want := range map[string][]string{
		"rent":    {"renting", "rented", "renter", "rents"},
		"use":     {"using", "used", "user", "users"},
		"run":     {"running", "runner"},
		"stop":    {"stopping", "stopped"},
		"renting": {"rent"},
		"making":  {"make"},
		"running": {"run"},
		"stopped": {"stop"},
	} {
		got := shortForms(w)
		for _, f := range want {
			if !slices.Contains(got, f) {
				t.Errorf("shortForms(%q) = %v, lacks %q", w, got, f)
			}
		}
	}
	for w, not := range map[string]string{"read": "ready", "list": "listen", "rent": "rental", "fix": "fixxing", "reading": "rea"} {
		if slices.Contains(shortForms(w), not) {
			t.Errorf("shortForms(%q) has %q", w, not)
		}
	}
	if f := shortForms("日本"); f != nil {
		t.Errorf("non-letters: %v", f)
	}
}

// Short words meet their longer forms, both ways, on real tool
// descriptions (bfcl's): renting a house finds the tool for a property
// to rent (after the two that match "house" as it is), and a query to
// run finds the one about running. Before, neither was found at all.
func TestShortWordsFindTheirForms(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"bfcl", "Homes_2_FindHomeByArea", "Search for a property to rent or buy in a specified city, filtering by number of bedrooms, bathrooms, garage availability, and in-unit laundry facilities."},
		[3]string{"bfcl", "Hotels_2_BookHouse", "Book the selected house for given dates and number of adults."},
		[3]string{"bfcl", "Hotels_2_SearchHouse", "Search for a house at a specified location with filter options on laundry service, number of adults, and rating."},
		[3]string{"bfcl", "Services_1_BookAppointment", "Book an appointment with a hair stylist or salon."},
		[3]string{"bfcl", "Music_3_PlayMedia", "Plays the specified music track on a designated media player device, running it until stopped."},
		[3]string{"bfcl", "Alarm_1_GetAlarms", "Retrieve a list of alarms that the user has configured on the device."},
	)
	x := NewBM25(c)
	for query, want := range map[string]string{
		"renting a house":      "Homes_2_FindHomeByArea",
		"houses we could rent": "Homes_2_FindHomeByArea",
		"run it":               "Music_3_PlayMedia",
	} {
		hits, err := x.Search(context.Background(), query, 3)
		if err != nil || !slices.ContainsFunc(hits, func(h Hit) bool { return h.Entry.Tool == want }) {
			t.Errorf("%q: %v %v, want %s in the first three", query, scores(hits), err, want)
		}
	}
}
