// Command fake-provisioner serves the example's fake provisioning system on
// 127.0.0.1:8181 (the worker's PROVISIONER_URL in longrun.types.yaml), for `make run
// TYPES=…`: environments become ready on the third poll, and those asked for with a callback
// URL (production ones) 5 s after the create, when the fake POSTs them to that URL.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"example.com/provision-environment/provisioner"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8181", "address to serve on")
	ready := flag.Int("ready-after", 3, "polls until an environment is ready")
	callback := flag.Duration("callback-after", 5*time.Second, "how long an environment asked for with a callback URL takes")
	flag.Parse()
	log.Printf("fake provisioner on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, provisioner.Handler(&provisioner.Fake{ReadyAfter: *ready, CallbackAfter: *callback})))
}
