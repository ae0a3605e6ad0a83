//go:build !linux

package main

import "errors"

const epollFloorSupported = false

func serveEpollFloor(string) error { return errors.New("epoll is Linux's") }
