package embedded

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redlockd/redlockd/internal/luanum"
	"github.com/redlockd/redlockd/quorum"
)

// The commands only the kinds' own scripts call (the fair queue and the
// readers of a shared lock are sorted sets, timed by TIME), with Redis 7's
// replies. A sorted set is a memHash marked zset: its members are the
// fields' names, their scores the fields' scores, small enough that a
// range sorts them when it is asked.
var luaKindCmds = map[string]luaCmd{
	"time": {1, (*luaRun).time}, "zadd": {-4, (*luaRun).zadd}, "zscore": {3, hashCmd(true, (*luaRun).zscore)},
	"zrem": {-3, hashCmd(true, (*luaRun).delFields)}, "zcard": {2, hashCmd(true, (*luaRun).countFields)},
	"zcount": {4, (*luaRun).zcount}, "zrange": {-4, (*luaRun).zrange},
	"zrangebyscore": {-4, (*luaRun).zrangebyscore}, "zremrangebyscore": {4, (*luaRun).zremrangebyscore},
}

const errNotFloat = "ERR value is not a valid float"

// time is the node's clock, as TIME answers: seconds and microseconds.
func (r *luaRun) time([]string) quorum.Value {
	us := r.s.now.UnixMicro()
	return quorum.Value{Kind: quorum.ArrayValue, Elems: []quorum.Value{
		bulkValue(strconv.FormatInt(us/1e6, 10)), bulkValue(strconv.FormatInt(us%1e6, 10))}}
}

// zset reads key as a sorted set (nil when absent): a WRONGTYPE error
// when it holds another type.
func (r *luaRun) zset(key string) (*memHash, *quorum.Value) { return r.fields(key, true) }

// parseScore reads a score: a float, or inf, +inf or -inf in any case
// (strconv reads those too); NaN is not one.
func parseScore(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsNaN(f)
}

// scoreRange reads a range's bound: a score, "(" and a score (exclusive).
type scoreBound struct {
	v    float64
	excl bool
}

func parseBound(s string) (scoreBound, bool) {
	b := scoreBound{}
	if strings.HasPrefix(s, "(") {
		b.excl, s = true, s[1:]
	}
	v, ok := parseScore(s)
	b.v = v
	return b, ok
}

func (b scoreBound) below(f float64) bool { return b.v < f || !b.excl && b.v == f } // b ≤ f
func (b scoreBound) above(f float64) bool { return b.v > f || !b.excl && b.v == f } // b ≥ f

// sorted is h's members by score, then member, as Redis orders them.
func sorted(h *memHash) []memField {
	fs := slices.Clone(h.all())
	slices.SortFunc(fs, func(a, b memField) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return fs
}

func (r *luaRun) zadd(args []string) quorum.Value {
	key, rest := args[0], args[1:]
	nx := false
	if strings.EqualFold(rest[0], "nx") {
		nx, rest = true, rest[1:]
	}
	if len(rest) == 0 || len(rest)%2 != 0 {
		return errorValue(errSyntax)
	}
	scores := make([]float64, len(rest)/2)
	for i := range scores {
		f, ok := parseScore(rest[2*i])
		if !ok {
			return errorValue(errNotFloat)
		}
		scores[i] = f
	}
	h, errv := r.zset(key)
	if errv != nil {
		return *errv
	}
	h = r.hashToWrite(key, h)
	h.zset = true
	var added int64
	for i, f := range scores {
		member := rest[2*i+1]
		if j := h.find(member); j >= 0 {
			if !nx {
				h.fields[j].score = f
			}
			continue
		}
		h.set(member, "")
		h.fields[h.find(member)].score = f
		added++
	}
	r.saveHash(key, h)
	return intValue(added)
}

func (*luaRun) zscore(args []string, h *memHash) quorum.Value {
	i := h.find(args[1])
	if i < 0 {
		return valueNil
	}
	return bulkValue(luanum.Arg(h.fields[i].score))
}

// inRange is the members of h between min and max, in order.
func (r *luaRun) inRange(key, min, max string) ([]memField, *quorum.Value) {
	lo, ok1 := parseBound(min)
	hi, ok2 := parseBound(max)
	if !ok1 || !ok2 {
		return nil, errorRef("ERR min or max is not a float")
	}
	h, errv := r.zset(key)
	if errv != nil {
		return nil, errv
	}
	var out []memField
	for _, f := range sorted(h) {
		if lo.below(f.score) && hi.above(f.score) {
			out = append(out, f)
		}
	}
	return out, nil
}

func (r *luaRun) zcount(args []string) quorum.Value {
	fs, errv := r.inRange(args[0], args[1], args[2])
	if errv != nil {
		return *errv
	}
	return intValue(int64(len(fs)))
}

// withScores reads an optional WITHSCORES.
func withScores(rest []string) (bool, bool) {
	switch {
	case len(rest) == 0:
		return false, true
	case len(rest) == 1 && strings.EqualFold(rest[0], "withscores"):
		return true, true
	}
	return false, false
}

// rangeReply is a range's members, each followed by its score with
// scores.
func rangeReply(fs []memField, scores bool) quorum.Value {
	if scores {
		return fieldsReply(fs, fieldName, fieldScore)
	}
	return fieldsReply(fs, fieldName)
}

func (r *luaRun) zrangebyscore(args []string) quorum.Value {
	scores, ok := withScores(args[3:])
	if !ok {
		return errorValue(errSyntax)
	}
	fs, errv := r.inRange(args[0], args[1], args[2])
	if errv != nil {
		return *errv
	}
	return rangeReply(fs, scores)
}

// zrange is ZRANGE by index (the form the scripts use).
func (r *luaRun) zrange(args []string) quorum.Value {
	scores, ok := withScores(args[3:])
	start, ok1 := parseInt(args[1])
	stop, ok2 := parseInt(args[2])
	if !ok || !ok1 || !ok2 {
		return errorValue(errNotInteger)
	}
	h, errv := r.zset(args[0])
	if errv != nil {
		return *errv
	}
	fs := sorted(h)
	n := int64(len(fs))
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	stop = min(stop, n-1)
	if start > stop || start >= n {
		return rangeReply(nil, false)
	}
	return rangeReply(fs[start:stop+1], scores)
}

func (r *luaRun) zremrangebyscore(args []string) quorum.Value {
	fs, errv := r.inRange(args[0], args[1], args[2])
	switch {
	case errv != nil:
		return *errv
	case len(fs) == 0:
		return intValue(0)
	}
	_, h, _ := r.look(args[0])
	h = r.hashToWrite(args[0], h)
	for _, f := range fs {
		h.del(f.name)
	}
	r.saveHash(args[0], h)
	return intValue(int64(len(fs)))
}
