// Command zerfoo-chat is a tiny chat REPL: zerfoo-chat model.gguf. Ctrl-C stops a reply,
// Ctrl-D quits.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	zerfoo "github.com/zerfoo/zerfoo/bindings/go"
)

func main() {
	nctx := flag.Int("ctx", 2048, "context size in tokens")
	maxTokens := flag.Int("n", 512, "max tokens per reply")
	system := flag.String("system", "", "system prompt")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zerfoo-chat [-ctx N] [-n N] [-system TEXT] model.gguf")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *nctx, *maxTokens, *system); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(path string, nctx, maxTokens int, system string) error {
	model, err := zerfoo.Open(path)
	if err != nil {
		return err
	}
	defer model.Close()
	session, err := model.NewSession(zerfoo.WithContextSize(nctx))
	if err != nil {
		return err
	}
	defer session.Close()

	var history []zerfoo.Message
	if system != "" {
		history = append(history, zerfoo.Message{Role: "system", Content: system})
	}
	fed := "" // the text already in the session's KV cache
	in := bufio.NewScanner(os.Stdin)
	for fmt.Fprint(os.Stderr, "> "); in.Scan(); fmt.Fprint(os.Stderr, "> ") {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		history = append(history, zerfoo.Message{Role: "user", Content: line})
		rendered, err := model.ChatTemplate(history, true)
		if err != nil {
			return err
		}
		// Feed only what is new when the rendering extends the cached conversation.
		prompt := rendered
		if fed != "" && strings.HasPrefix(rendered, fed) {
			prompt = rendered[len(fed):]
		} else if err := session.Reset(); err != nil {
			return err
		}
		reply, err := generate(session, prompt, maxTokens)
		fmt.Println()
		if errors.Is(err, zerfoo.ErrCancelled) {
			fmt.Fprintln(os.Stderr, "[stopped]")
		} else if err != nil {
			return err
		}
		history = append(history, zerfoo.Message{Role: "assistant", Content: reply})
		fed = rendered + reply
	}
	return in.Err()
}

// generate streams one reply to stdout; Ctrl-C cancels it.
func generate(s *zerfoo.Session, prompt string, maxTokens int) (string, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var reply strings.Builder
	for piece, err := range s.Stream(ctx, prompt, zerfoo.WithMaxTokens(maxTokens)) {
		if err != nil {
			return reply.String(), err
		}
		reply.WriteString(piece)
		fmt.Print(piece)
	}
	return reply.String(), nil
}
