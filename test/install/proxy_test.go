package install

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy stands for the Service in front of the replicas: it forwards each TCP
// connection to the next backend, round robin, and to another when one does
// not accept (a dead pod leaves the Service's endpoints).
type proxy struct {
	ln       net.Listener
	mu       sync.Mutex
	backends []string
	next     int
	conns    map[string]*atomic.Int64
}

func startProxy(t *testing.T) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, conns: map[string]*atomic.Int64{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setBackends(addrs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = addrs
	for _, a := range addrs {
		if p.conns[a] == nil {
			p.conns[a] = &atomic.Int64{}
		}
	}
}

func (p *proxy) serve(c net.Conn) {
	defer c.Close()
	p.mu.Lock()
	order := make([]string, 0, len(p.backends))
	for i := range p.backends {
		order = append(order, p.backends[(p.next+i)%len(p.backends)])
	}
	p.next++
	p.mu.Unlock()
	for _, b := range order {
		up, err := netDialer.Dial("tcp", b)
		if err != nil {
			continue
		}
		p.mu.Lock()
		p.conns[b].Add(1)
		p.mu.Unlock()
		defer up.Close()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		return
	}
}
