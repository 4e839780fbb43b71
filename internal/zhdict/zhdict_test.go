package zhdict

import (
	"strings"
	"testing"
)

// Real descriptions of AMap's and Baidu Maps' MCP servers.
func TestGloss(t *testing.T) {
	for text, want := range map[string][]string{
		"根据城市名称或者标准adcode查询指定城市的天气":                   {"city", "weather"},
		"步行路径规划 API 可以根据输入起点终点经纬度坐标规划100km 以内的步行通勤方案": {"walk", "plan", "coordinate", "commuting"},
		"根据城市和道路名称查询具体道路的实时拥堵评价":                      {"road", "real time", "congestion"},
		"地点检索服务（包括城市检索、圆形区域检索、多边形区域检索）":               {"retrieve", "city", "polygon"},
	} {
		got := Gloss(text)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("Gloss(%q) = %q, lacks %q", text, got, w)
			}
		}
	}
	if g := Gloss("Search for places near a coordinate"); g != "" {
		t.Errorf("English text: %q", g)
	}
}
