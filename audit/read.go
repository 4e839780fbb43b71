package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"time"
)

// Read returns the records of the log at path and its rotated files,
// oldest first, from since on (all when since is zero). Lines that are not
// records (a file cut by a crash) are counted in bad.
func Read(path string, since time.Time) (recs []Record, bad int, err error) {
	var files []string
	for i := 20; i >= 1; i-- {
		if p := path + "." + strconv.Itoa(i); exists(p) {
			files = append(files, p)
		}
	}
	files = append(files, path)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && p != path {
				continue
			}
			return nil, bad, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Kind == "" {
				bad++
				continue
			}
			if r.Time.Before(since) {
				continue
			}
			recs = append(recs, r)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, bad, err
		}
	}
	return recs, bad, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
