// Command httpdns-fetch fetches a URL with net/http over httpdnsd (IP-direct, the machine's
// shared cookie jar) and prints the final response's body, as curl -L does.
//
//	httpdns-fetch [-socket PATH] [-cacert FILE] [-d FORM-DATA] URL
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	httpdns "httpdnsd.example/clients/go"
)

func main() {
	socket := flag.String("socket", "", "the daemon's socket (default: httpdnsd-rpc(7)'s rules)")
	caFile := flag.String("cacert", "", "a PEM file of CA certificates to trust instead of the system's")
	form := flag.String("d", "", "POST this application/x-www-form-urlencoded body")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: httpdns-fetch [-socket PATH] [-cacert FILE] [-d FORM-DATA] URL")
		os.Exit(2)
	}
	c, err := httpdns.Dial(*socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(69)
	}
	defer c.Close()
	transport := c.Transport()
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(66)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: transport}
	var response *http.Response
	if *form != "" {
		response, err = client.Post(flag.Arg(0), "application/x-www-form-urlencoded", strings.NewReader(*form))
	} else {
		response, err = client.Get(flag.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer response.Body.Close()
	if _, err := io.Copy(os.Stdout, response.Body); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if response.StatusCode >= 400 {
		os.Exit(1)
	}
}
