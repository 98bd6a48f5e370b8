"""Read TPU prices from Google's Cloud Billing Catalog into tpubuild's cache, or show the prices plan uses.

examples:
  tpubuild prices update                          read the catalogue (TPUBUILD_BILLING_API_KEY, else ADC)
  tpubuild prices update --api-key KEY
  tpubuild prices update --endpoint http://127.0.0.1:8080     a mirror or a fake: no credentials
  tpubuild prices show --generation v6e --region us-east5

update reads the SKUs of Compute Engine (services/6F81-5844-456A: v5e, v5p, v6e, TPU7x), matches each to
one price (generation x mode x region: on-demand, spot, flex-start = DWS Defined Duration, calendar mode,
1- and 3-year commitments) and writes prices-<date>.json in $TPUBUILD_CACHE/prices (default
~/.cache/tpubuild/prices). plan, plan --all and status then price from it; without it they use the
bundled snapshot. show prints every figure with its source (the SKU, or the bundled snapshot) and date.
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("verb", choices=("update", "show"), metavar="update|show", help="read the catalogue, or show the prices")
    p.add_argument("--api-key", metavar="KEY", help="update: a Cloud Billing API key (default: $TPUBUILD_BILLING_API_KEY, "
                                                    "else Application Default Credentials)")
    p.add_argument("--endpoint", metavar="URL", help="update: the catalogue's endpoint (http:// needs no credentials)")
    p.add_argument("--generation", metavar="G", help="show: one generation (v5e, v6e, tpu7x, ...)")
    p.add_argument("--region", metavar="R", help="show: one region, with what plan uses where no SKU matches")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


VERB = Verb.of(__doc__, "prices", Group.USER, 13, "read TPU prices from the Cloud Billing Catalog, or show them",
               arguments, work("builder.commands.prices", "run_prices"))
