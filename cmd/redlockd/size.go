package main

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

var errSize = errors.New("not a size (e.g. 1048576, 512kb, 64mb, 1gb)")

// parseSize reads a byte count the way redis.conf does: a number with an
// optional unit, where k, m, g are powers of 1000 and kb, mb, gb powers
// of 1024, in any case.
func parseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	units := []struct {
		suffix string
		mult   int64
	}{
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errSize
	}
	return n * mult, nil
}

func sizeSetter(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		*field(c) = int(n)
		return nil
	}
}
