BvariableJÙ5%CÊŒC€ÄCR€C‘NC
£BĞ1êC