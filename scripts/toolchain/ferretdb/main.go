// Command ferretdb serves the MongoDB wire protocol on a loopback port, storing
// data in SQLite files under -data. It prints the chosen address as a MongoDB
// URI on stdout (and into -uri-file), so callers can listen on port 0.
//
// It is built against FerretDB with ffkube's patches applied (patches/, and
// docs/adr/0001-patched-ferretdb.md for why).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only with -pprof-addr, for profiling the store (see bench/)
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to listen on")
	data := flag.String("data", "", "directory for the SQLite databases (required)")
	synchronous := flag.String("synchronous", "normal", "SQLite's synchronous pragma: normal (no fsync per commit) or full")
	uriFile := flag.String("uri-file", "", "file to write the MongoDB URI to once listening")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	pprofAddr := flag.String("pprof-addr", "", "serve Go's pprof on this loopback address (e.g. 127.0.0.1:6060); off when empty")
	flag.Parse()
	if *pprofAddr != "" {
		go func() { log.Println(http.ListenAndServe(*pprofAddr, nil)) }()
	}
	config := ferretdb.Config{Listener: ferretdb.ListenerConfig{TCP: *listen}}
	if *data == "" {
		log.Fatal("-data is required")
	}
	if err := os.MkdirAll(*data, 0o700); err != nil {
		log.Fatal(err)
	}
	if *synchronous != "normal" && *synchronous != "full" {
		log.Fatal("-synchronous is normal or full")
	}
	config.Handler = "sqlite"
	// In WAL mode (FerretDB's default), synchronous=normal commits without an
	// fsync: a crash of any process loses nothing, a power cut may lose the
	// last commits; FerretDB's default (full) costs an fsync per write.
	config.SQLiteURL = "file:" + *data + "/?_pragma=synchronous(" + *synchronous + ")"

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	config.Logger = logger
	f, err := ferretdb.New(&config)
	if err != nil {
		log.Fatal(err)
	}

	uri := f.MongoDBURI()
	if *uriFile != "" {
		// Written then renamed, so a reader never sees half a URI.
		tmp := *uriFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(uri+"\n"), 0o600); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(tmp, *uriFile); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(uri)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
