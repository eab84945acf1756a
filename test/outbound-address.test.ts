// Which addresses a production webhook step may reach: a corpus of loopback, private, link-local,
// metadata, reserved and IPv6-wrapped forms, the URL spellings of IPv4 that resolve to them, and
// public addresses that stay allowed.

import { expect } from 'chai';
import { isBlockedAddress } from '../runtime-lib/workflows/outbound-address.ts';

/** The host a URL connects to, as the webhook step reads it (brackets of IPv6 dropped). */
const hostOf = (url: string) => new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');

describe('outbound webhook addresses (production)', () => {
  const blocked = [
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '169.254.0.1',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.250',
    '255.255.255.255',
    '240.0.0.1',
    '192.0.2.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '::1',
    '::',
    '0:0:0:0:0:0:0:1',
    'fc00::1',
    'fd00:ec2::254',
    'fdff:ffff::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '::ffff:0:127.0.0.1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1',
    '2002:7f00:1::',
    '2001:db8::1',
    '[::1]',
    'not-an-address',
    '',
  ];
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '169.255.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:81c::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::',
  ];

  for (const address of blocked)
    it(`refuses ${address || '(empty)'}`, () => expect(isBlockedAddress(address)).to.equal(true));
  for (const address of allowed) it(`allows ${address}`, () => expect(isBlockedAddress(address)).to.equal(false));

  it('refuses IPv4 written in decimal, octal, hex or short forms: the URL parser reads them as what they mean', () => {
    for (const url of [
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://127.1/',
      'http://0x7f000001/',
      'http://017700000001/',
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://[::ffff:7f00:1]/',
      'http://[0:0:0:0:0:ffff:127.0.0.1]/',
    ]) {
      const host = hostOf(url);
      expect(isBlockedAddress(host), `${url} -> ${host}`).to.equal(true);
    }
    expect(hostOf('http://2130706433/')).to.equal('127.0.0.1');
    expect(hostOf('http://0x7f.1/')).to.equal('127.0.0.1');
  });
});
