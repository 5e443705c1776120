// Command zerfoo-sse serves Server-Sent Events: each GET /generate?prompt=... streams the
// reply, one "data:" event per piece, then "event: done". A client disconnect cancels the
// request's context, which stops generation.
//
//	zerfoo-sse -addr :8080 model.gguf
//	curl -N 'localhost:8080/generate?prompt=Hello'
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"strings"

	zerfoo "github.com/zerfoo/zerfoo/bindings/go"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "listen address")
	nctx := flag.Int("ctx", 1024, "context size per request")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: zerfoo-sse [-addr host:port] [-ctx N] model.gguf")
	}
	model, err := zerfoo.Open(flag.Arg(0))
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	http.Handle("/generate", handler(model, *nctx))
	log.Printf("listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// handler gives each request its own Session; the Model is shared.
func handler(model *zerfoo.Model, nctx int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		flusher, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		maxTokens, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if maxTokens <= 0 {
			maxTokens = 128
		}
		prompt, err := model.ChatTemplate([]zerfoo.Message{{Role: "user", Content: r.URL.Query().Get("prompt")}}, true)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		session, err := model.NewSession(zerfoo.WithContextSize(nctx))
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer session.Close()

		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for piece, err := range session.Stream(r.Context(), prompt, zerfoo.WithMaxTokens(maxTokens)) {
			if err != nil {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", oneLine(err.Error()))
				return
			}
			data, _ := json.Marshal(piece) // JSON keeps newlines inside one data: line
			fmt.Fprintf(w, "data: %s\n\n", data)
			flusher.Flush()
		}
		res := session.LastResult()
		fmt.Fprintf(w, "event: done\ndata: {\"stop\":%q,\"tokens\":%d,\"tok_per_s\":%.1f}\n\n",
			res.StopReason, res.NGenerated, res.TokensPerSecond())
		flusher.Flush()
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
