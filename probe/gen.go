package probe

//go:generate go run ./internal/gen -out .
