"""Reads a service's HTTP endpoint as Prometheus and a probe would, and prints one JSON line.

    scrape_metrics.py http://127.0.0.1:PORT/metrics   -> {"status": 200, "families": {name: type}, "samples": [...]}
    scrape_metrics.py http://127.0.0.1:PORT/readyz    -> {"status": 200 or 503, "body": "..."}

/metrics is parsed with prometheus_client's own text parser (the format Prometheus scrapes): a line it cannot
parse fails the script (exit 1, the parser's error on standard error), so the tests check the exposition itself.
"""
import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode("utf-8")


def main():
    url = sys.argv[1]
    status, content_type, body = fetch(url)
    if not url.endswith("/metrics"):
        print(json.dumps({"status": status, "contentType": content_type, "body": body}))
        return
    families = {}
    samples = []
    for family in text_string_to_metric_families(body):
        families[family.name] = family.type
        for sample in family.samples:
            samples.append({"name": sample.name, "labels": sample.labels, "value": sample.value})
    print(json.dumps({"status": status, "contentType": content_type, "families": families, "samples": samples}))


if __name__ == "__main__":
    main()
