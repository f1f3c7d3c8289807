//go:build ignore

// Command dict writes zh_dict.txt.gz, the compact Chinese dictionary: the N
// most frequent words of gse's Simplified dictionary (s_1.txt, Apache-2.0 /
// MIT, shipped in the github.com/go-ego/gse module), ties broken by the word.
// Run from search/internal/text:
//
//	go run gen/dict.go "$(go list -m -f '{{.Dir}}' github.com/go-ego/gse)/data/dict/zh/s_1.txt" 60000
package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"
)

type entry struct {
	word, line string
	freq       float64
}

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: go run gen/dict.go s_1.txt N")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n <= 0 {
		log.Fatalf("bad N %q", os.Args[2])
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var all []entry
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || seen[fields[0]] {
			continue
		}
		freq, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		seen[fields[0]] = true
		all = append(all, entry{fields[0], strings.Join(fields, " "), freq})
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].freq != all[j].freq {
			return all[i].freq > all[j].freq
		}
		return all[i].word < all[j].word
	})
	if n > len(all) {
		n = len(all)
	}
	keep := all[:n]
	sort.Slice(keep, func(i, j int) bool { return keep[i].word < keep[j].word })
	out, err := os.Create("zh_dict.txt.gz")
	if err != nil {
		log.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	for _, e := range keep {
		fmt.Fprintln(zw, e.line)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote zh_dict.txt.gz: %d of %d words\n", n, len(all))
}
