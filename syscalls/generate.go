package syscalls

//go:generate go run ./internal/mktables
