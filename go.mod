module github.com/toolshelf/toolshelf

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
