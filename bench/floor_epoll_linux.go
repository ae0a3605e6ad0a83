package main

import (
	"net"
	"os"
	"runtime"
	"syscall"
)

// The epoll floor is the Go floor's work (read what came, answer each
// complete request with +OK in one write) done by an event loop of its own
// instead of a goroutine per connection: one loop per processor, each on
// a level-triggered epoll set of its connections, one read per ready
// connection and wake-up, no goroutine parked or woken per request. It is
// the other I/O model a Go proxy can take; measured beside the goroutine
// per connection, it says which of the two costs less here.
const epollFloorSupported = true

// serveEpollFloor serves the epoll floor on addr until its listener fails.
func serveEpollFloor(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	loops := make([]int, runtime.GOMAXPROCS(0))
	for i := range loops {
		if loops[i], err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
			return err
		}
		go epollLoop(loops[i])
	}
	for i := 0; ; i++ {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		// The loop owns a duplicate of the socket; the net.Conn and its
		// place in the runtime's poller are let go.
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			continue
		}
		fd, err := syscall.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			continue
		}
		if syscall.SetNonblock(fd, true) != nil {
			syscall.Close(fd)
			continue
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
		if syscall.EpollCtl(loops[i%len(loops)], syscall.EPOLL_CTL_ADD, fd, &ev) != nil {
			syscall.Close(fd)
		}
	}
}

func epollLoop(ep int) {
	conns := map[int32]*floorInput{}
	evs := make([]syscall.EpollEvent, 256)
	out := make([]byte, 0, 16<<10)
	drop := func(fd int32) {
		syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, int(fd), nil)
		syscall.Close(int(fd))
		delete(conns, fd)
	}
	for {
		n, err := syscall.EpollWait(ep, evs, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			os.Exit(1)
		}
		for _, ev := range evs[:n] {
			in := conns[ev.Fd]
			if in == nil {
				in = &floorInput{}
				conns[ev.Fd] = in
			}
			space := in.space()
			if space == nil {
				drop(ev.Fd)
				continue
			}
			m, err := syscall.Read(int(ev.Fd), space)
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			if err != nil || m == 0 {
				drop(ev.Fd)
				continue
			}
			var end bool
			out, end = in.answer(m, out[:0])
			// Replies are a few bytes: the socket's buffer takes them
			// whole, and a client that does not read is dropped.
			if len(out) > 0 {
				if w, err := syscall.Write(int(ev.Fd), out); err != nil || w != len(out) {
					end = true
				}
			}
			if end {
				drop(ev.Fd)
			}
		}
	}
}
