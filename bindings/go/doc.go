// Package zerfoo runs GGUF language models through libzerfoo, loaded at run time with purego:
// no cgo, so programs build with CGO_ENABLED=0.
//
//	m, err := zerfoo.Open("model.gguf")
//	...
//	defer m.Close()
//	s, err := m.NewSession(zerfoo.WithContextSize(2048))
//	...
//	defer s.Close()
//	for piece, err := range s.Stream(ctx, "Once upon a time", zerfoo.WithMaxTokens(64)) {
//		if err != nil { ... }
//		fmt.Print(piece)
//	}
//
// The library is found by Load's path, then $ZERFOO_LIBRARY, then the system loader
// ("libzerfoo.so.0", "libzerfoo.so"). A Model is safe for concurrent use; a Session runs one
// call at a time. Errors from the library are *Error values; test them with errors.Is against
// ErrIO, ErrFormat, ErrCancelled and the other sentinels.
package zerfoo
