package search

import (
	"context"
	"testing"
)

// Tools described only in Chinese (AMap's and Baidu Maps' MCP servers,
// their real descriptions) are found by requests in English through the
// English meanings of their words; without them, not.
func TestEnglishFindsChineseDescriptions(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"amap", "maps_geo", "将详细的结构化地址转换为经纬度坐标。支持对地标性名胜景区、建筑物名称解析为经纬度坐标"},
		[3]string{"amap", "maps_bicycling", "骑行路径规划用于规划骑行通勤方案，规划时会考虑天桥、单行线、封路等情况。最大支持 500km 的骑行路线规划"},
		[3]string{"baidu-map", "map_road_traffic", "根据城市和道路名称查询具体道路的实时拥堵评价和拥堵路段、拥堵距离、拥堵趋势等信息"},
		[3]string{"github", "get_file_contents", "Get the contents of a file or directory from a GitHub repository"},
		[3]string{"slack", "slack_post_message", "Post a new message to a Slack channel"},
		[3]string{"google-maps", "maps_elevation", "Get elevation data for locations on the earth"},
	)
	with := NewBM25(c)
	var without Variant
	for _, v := range Variants {
		if v.Name == "flat" {
			without = v.Variant
		}
	}
	before := NewBM25Variant(c, without)
	for query, want := range map[string]string{
		"coordinates of a scenic spot":  "maps_geo",
		"congestion trends in the city": "map_road_traffic",
		"plan my commute by bike":       "maps_bicycling",
	} {
		hits, err := with.Search(context.Background(), query, 3)
		if err != nil || len(hits) == 0 || hits[0].Entry.Tool != want {
			t.Errorf("%q: %v %v, want %s first", query, scores(hits), err, want)
		}
		hits, _ = before.Search(context.Background(), query, 3)
		if len(hits) > 0 && hits[0].Entry.Tool == want {
			t.Errorf("%q found %s without the translations: the test shows nothing", query, want)
		}
	}
}
