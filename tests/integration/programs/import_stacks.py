"""Imports made at a user's lines, some nested deep (email, xml, http pull in more modules), then a little
work of its own: stacks that pass through the import machinery (<frozen importlib._bootstrap>) many levels
deep, and allocations the machinery makes itself (reading each module's bytecode). Prints a checksum."""
import json
import email.mime.text
import xml.dom.minidom
import http.client
import argparse
import decimal


def build(n):
    doc = xml.dom.minidom.parseString("<a>" + "<b>x</b>" * n + "</a>")
    msg = email.mime.text.MIMEText(json.dumps([str(i) for i in range(n)]))
    return len(doc.getElementsByTagName("b")) + len(msg.as_string())


print(build(200) + len(argparse.ArgumentParser().format_help()) + int(decimal.Decimal("1.5") * 2)
      + len(http.client.responses))
