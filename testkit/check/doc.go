// Package check decides whether a recorded lock history kept mutual
// exclusion. Clients record each critical section as the interval during
// which they were entitled to believe they held the lock: from the moment
// the acquire returned to the earlier of the release call and the end of
// the lock's validity. Two intervals of the same key that overlap are a
// violation, whatever the lock service says.
//
// A second, independent signal is a shared counter per key that every
// holder increments read-modify-write inside its section: with mutual
// exclusion the final value equals the number of increments, and every
// increment missing from it is a lost update.
//
// All times must come from one process's time.Now, so that comparisons use
// Go's monotonic clock.
package check
