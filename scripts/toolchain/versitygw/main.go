// Command versitygw runs the Versity S3 Gateway with its posix backend only:
// the managed bucket of `npm start` and of the tests (docs/adr/0007-versitygw.md).
//
// Upstream's ./cmd/versitygw links every backend (Azure, s3proxy, ScoutFS,
// plugins) and its `test` and `admin` commands with their SDKs, a third of
// its cold build's source; this main wires the posix backend into the same
// library call upstream's main makes (embedgw.RunVersityGW), with upstream's
// defaults for every setting, and takes only the command line ffkube passes
// (api/local/versitygw.ts):
//
//	versitygw [--port ADDR] [--health PATH] [--keep-alive] [--quiet] [--version]
//	  posix [--data-integrity-etag] [--disable-object-lock-file] DIR
//
// with the root credentials in ROOT_ACCESS_KEY_ID and ROOT_SECRET_ACCESS_KEY.
// Any other flag is refused rather than ignored. It is built against
// versitygw with ffkube's patches applied (patches/, scripts/provision.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/debuglogger"
	"github.com/versity/versitygw/embedgw"
)

// Set at link time, as upstream's Makefile sets them (scripts/provision.sh).
var (
	Version   = "git"
	Build     = "norev"
	BuildTime = "none"
)

// Upstream's defaults (cmd/versitygw/main.go and cmd/internal/gwcli/posix.go of v1.8.0).
const (
	defaultPort           = ":7070"
	defaultMaxConnections = 250000
	defaultMaxRequests    = 100000
	defaultMultipartParts = 10000
	defaultIAMCacheTTL    = 120
	defaultIAMCachePrune  = 3600
	defaultCopyThreshold  = 5 * 1024 * 1024 * 1024
	defaultConcurrency    = 5000
	defaultIOBufferSize   = 1024 * 1024
	defaultDirPerm        = 0o755
	defaultFilePerm       = 0o644
)

// gatewayFlags are the global flags ffkube passes, named as upstream names them.
type gatewayFlags struct {
	ports     []string
	health    string
	keepAlive bool
	quiet     bool
	version   bool
}

// posixFlags are the posix command's flags ffkube passes, and its directory.
type posixFlags struct {
	dataIntegrityEtag     bool
	disableObjectLockFile bool
	dir                   string
}

func parseGatewayFlags(args []string) (gatewayFlags, []string, error) {
	var g gatewayFlags
	set := flag.NewFlagSet("versitygw", flag.ContinueOnError)
	set.Func("port", "listen address <ip>:<port> or :<port> (repeatable; default "+defaultPort+")", func(v string) error {
		g.ports = append(g.ports, v)
		return nil
	})
	set.StringVar(&g.health, "health", "", "path answered without authentication, for health checks")
	set.BoolVar(&g.keepAlive, "keep-alive", false, "keep client connections open between requests")
	set.BoolVar(&g.quiet, "quiet", false, "no log line per request")
	set.BoolVar(&g.version, "version", false, "print the version and exit")
	if err := set.Parse(args); err != nil {
		return g, nil, err
	}
	if len(g.ports) == 0 {
		g.ports = []string{defaultPort}
	}
	return g, set.Args(), nil
}

// errPrinted: the flag package has already printed the error and the usage.
var errPrinted = errors.New("printed")

func parsePosixFlags(args []string) (posixFlags, error) {
	var p posixFlags
	if len(args) == 0 || args[0] != "posix" {
		return p, errors.New("the only command is posix (this build serves the posix backend alone)")
	}
	set := flag.NewFlagSet("posix", flag.ContinueOnError)
	set.BoolVar(&p.dataIntegrityEtag, "data-integrity-etag", false, "ETags derived from the data-integrity checksum instead of an MD5")
	set.BoolVar(&p.disableObjectLockFile, "disable-object-lock-file", false, "no shared lock file per conditional write (one gateway per folder)")
	if err := set.Parse(args[1:]); err != nil {
		return p, errPrinted
	}
	if set.NArg() != 1 {
		return p, errors.New("posix takes one directory")
	}
	p.dir = set.Arg(0)
	return p, nil
}

// posixBackend is upstream's runPosix with its defaults: extended-attribute metadata.
func posixBackend(p posixFlags) (*posix.Posix, error) {
	if p.disableObjectLockFile {
		fmt.Println("Warning: shared object publish locking disabled; conditional write atomicity is limited to this gateway process")
	}
	opts := posix.PosixOpts{
		ForceNoObjLockFile:  p.disableObjectLockFile,
		Concurrency:         defaultConcurrency,
		IOBufferSize:        defaultIOBufferSize,
		CopyObjectThreshold: defaultCopyThreshold,
		DataIntegrityEtag:   p.dataIntegrityEtag,
	}
	opts.SetNewDirPerm(fs.FileMode(defaultDirPerm))
	opts.SetNewFilePerm(fs.FileMode(defaultFilePerm))
	if err := (meta.XattrMeta{}).Test(p.dir); err != nil {
		return nil, fmt.Errorf("xattr check failed: %w", err)
	}
	be, err := posix.New(p.dir, meta.XattrMeta{}, opts)
	if err != nil {
		return nil, fmt.Errorf("failed to init posix backend: %w", err)
	}
	return be, nil
}

func gatewayConfig(g gatewayFlags, sigHup chan struct{}) *embedgw.Config {
	return &embedgw.Config{
		RootUserAccess:      os.Getenv("ROOT_ACCESS_KEY_ID"),
		RootUserSecret:      os.Getenv("ROOT_SECRET_ACCESS_KEY"),
		Region:              "us-east-1",
		Ports:               g.ports,
		MaxConnections:      defaultMaxConnections,
		MaxRequests:         defaultMaxRequests,
		AdminMaxConnections: defaultMaxConnections,
		AdminMaxRequests:    defaultMaxRequests,
		MultipartMaxParts:   defaultMultipartParts,
		LogLevel:            debuglogger.LevelSilent,
		Quiet:               g.quiet,
		KeepAlive:           g.keepAlive,
		HealthPath:          g.health,
		S3IAMRegion:         "us-east-1",
		IAMCacheTTL:         defaultIAMCacheTTL,
		IAMCachePrune:       defaultIAMCachePrune,
		SigHup:              sigHup,
		Version:             Version,
		Build:               Build,
		BuildTime:           BuildTime,
	}
}

func main() {
	g, rest, err := parseGatewayFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	if g.version {
		fmt.Println("Version  :", Version)
		fmt.Println("Build    :", Build)
		fmt.Println("BuildTime:", BuildTime)
		return
	}
	p, err := parsePosixFlags(rest)
	if err != nil {
		if !errors.Is(err, errPrinted) {
			fmt.Fprintln(os.Stderr, "versitygw:", err)
		}
		os.Exit(2)
	}
	be, err := posixBackend(p)
	if err != nil {
		log.Fatal(err)
	}

	// As upstream's signal handler: INT and TERM stop the gateway, HUP makes it reload (its TLS files, its logs).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sigHup := make(chan struct{}, 1)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	go func() {
		for range hups {
			select {
			case sigHup <- struct{}{}:
			default:
			}
		}
	}()
	if err := embedgw.RunVersityGW(ctx, be, gatewayConfig(g, sigHup)); err != nil {
		log.Fatal(err)
	}
}
