package commands

// Library scripts, for the tests of package commands_test.
const (
	RedlockExtendV5     = redlockExtendV5
	RedsyncTouchOrSetNX = redsyncTouchOrSetNX
)
