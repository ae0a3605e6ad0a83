package backend

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// goRedisLogger receives go-redis's own messages once RouteGoRedisLogs ran.
var goRedisLogger atomic.Pointer[slog.Logger]

// RouteGoRedisLogs sends go-redis's own messages (dial failures, pool
// notes) to the logger given to SetGoRedisLogger, at debug level: backend
// state changes are already logged once each by the health watch, and
// go-redis would otherwise write an unstructured line to stderr for every
// failed dial. It swaps a package variable of go-redis, so a program calls
// it once, before any client exists.
func RouteGoRedisLogs() {
	redis.SetLogger(goRedisLog{})
}

// SetGoRedisLogger chooses where routed go-redis messages go.
func SetGoRedisLogger(log *slog.Logger) { goRedisLogger.Store(log) }

type goRedisLog struct{}

func (goRedisLog) Printf(ctx context.Context, format string, v ...any) {
	log := goRedisLogger.Load()
	if log == nil {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	log.Log(ctx, slog.LevelDebug, msg, "component", "go-redis")
}
