package search_test

import (
	"context"
	"os"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/evaluate"
	"github.com/toolshelf/toolshelf/search"
)

// Real tools whose descriptions or parameters are in Chinese or Korean
// (from the etom and BFCL live datasets), found by queries in the same
// language that share no whole word with them: only the pairs of
// characters match (股票 in 股票代码, 에어컨 in 에어컨을).
func TestCJKQueriesFindTheirTools(t *testing.T) {
	f, err := os.Open("testdata/cjk_tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	es, err := evaluate.ReadTools(f)
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New(es, nil)
	for _, tc := range []struct{ query, want string }{
		{"查看股票价格", "FinanceMCP::stock_data"},
		{"平安银行的股票行情", "FinanceMCP::stock_data"},
		{"向集合添加数据", "UniCloudDB-MCP::add"},
		{"根据接口ID获取接口信息", "yapi-get-interface-mcp::yapi-get-interface"},
		{"거실 에어컨을 실행해줘", "ControlAppliance.execute"},
	} {
		for _, kind := range []string{"bm25", "hybrid"} {
			e, err := search.New(kind, c)
			if err != nil {
				t.Fatal(err)
			}
			hits, err := e.Search(context.Background(), tc.query, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 || hits[0].Entry.ID != tc.want {
				var got []string
				for _, h := range hits {
					got = append(got, h.Entry.ID)
				}
				t.Errorf("%s %q: got %v, want %s first", kind, tc.query, got, tc.want)
			}
		}
	}
}
