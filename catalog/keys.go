package catalog

import (
	"reflect"
	"strings"

	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// serverKeys are the keys a server object of a catalog file may have.
var serverKeys = func() []string {
	keys := []string{"tools"}
	t := reflect.TypeFor[Server]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}()

// unknownField returns the first key of a catalog file's object, or of
// one of its server objects, that the format does not have ("" when
// there is none), matched without regard to case as encoding/json
// matches them. data is valid JSON (json.Unmarshal has read it): one walk
// over it costs less than decoding it again with DisallowUnknownFields.
func unknownField(data []byte) string {
	s := jsonscan.New(data)
	bad := ""
	s.Object(func(key string) {
		if bad != "" {
			return
		}
		if !strings.EqualFold(key, "servers") {
			bad = key
			return
		}
		s.Array(func() {
			s.Object(func(key string) {
				if bad == "" && !known(key) {
					bad = key
				}
			})
		})
	})
	return bad
}

func known(key string) bool {
	for _, k := range serverKeys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// firstValueEnd returns where the data after the first JSON value of
// data starts, spaces skipped.
func firstValueEnd(data []byte) int {
	s := jsonscan.New(data)
	s.Skip()
	s.Peek()
	return s.Pos()
}
