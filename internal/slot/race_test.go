//go:build race

package slot

const raceBuild = true
