// Command zerfoo-tps measures generation throughput through the Go binding: the same greedy
// generation as `zerfoo generate -p PROMPT -n N --temp 0 --ignore-eos`, timed in Go around the
// Stream loop (so callback and iterator overhead count), next to the library's own numbers.
//
//	zerfoo-tps -n 128 -t 2 -r 3 model.gguf
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	zerfoo "github.com/zerfoo/zerfoo/bindings/go"
)

func main() {
	n := flag.Int("n", 128, "tokens to generate")
	threads := flag.Int("t", 0, "threads (0 = library default)")
	reps := flag.Int("r", 3, "repetitions")
	prompt := flag.String("p", "The capital of France is", "prompt")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zerfoo-tps [-n N] [-t T] [-r R] [-p PROMPT] model.gguf")
		os.Exit(2)
	}
	model, err := zerfoo.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer model.Close()
	for i := 0; i < *reps; i++ {
		s, err := model.NewSession(zerfoo.WithThreads(*threads), zerfoo.WithContextSize(*n+64))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var first time.Time
		pieces := 0
		for _, err := range s.Stream(context.Background(), *prompt, zerfoo.WithTemperature(0),
			zerfoo.WithMaxTokens(*n), zerfoo.WithIgnoreEOS()) {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			if pieces == 0 {
				first = time.Now()
			}
			pieces++
		}
		wall := time.Since(first)
		r := s.LastResult()
		// Pieces after the first arrive one decode step apart: (generated-1) steps in `wall`.
		fmt.Printf("go: %d tokens, decode %.2f tok/s (Go wall clock), library reports %.2f tok/s\n",
			r.NGenerated, float64(r.NGenerated-1)/wall.Seconds(), r.TokensPerSecond())
		s.Close()
	}
}
