//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package main

import "syscall"

func ctime(s *syscall.Stat_t) int64 { return s.Ctimespec.Sec*1e9 + s.Ctimespec.Nsec }
