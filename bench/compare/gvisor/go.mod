module github.com/syscell/syscell/bench/compare/gvisor

go 1.26.8

require (
	github.com/opencontainers/runtime-spec v1.3.0
	gvisor.dev/gvisor v0.0.0-20260527191743-a81fd9dd382e
)

require (
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/sys v0.43.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
