//! The invocation as written: `key = value` pairs separated by commas.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, Token};

/// One `key = value` argument. Its tokens are the span of errors about it.
pub struct Arg {
    pub key: Ident,
    eq: Token![=],
    pub value: Expr,
}

impl Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(Arg {
            // `parse_any` so that a keyword used as a key is reported as an unknown key.
            key: input.call(Ident::parse_any)?,
            eq: input.parse()?,
            value: input.parse()?,
        })
    }
}

impl ToTokens for Arg {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.key.to_tokens(tokens);
        self.eq.to_tokens(tokens);
        self.value.to_tokens(tokens);
    }
}

impl Arg {
    /// The key as a string.
    pub fn name(&self) -> String {
        self.key.unraw().to_string()
    }

    /// An error spanning the whole `key = value` pair.
    pub fn error(&self, message: impl std::fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self, message)
    }

    /// The value as a literal, if it is one.
    pub fn literal(&self) -> Option<&Lit> {
        match &self.value {
            Expr::Lit(lit) => Some(&lit.lit),
            _ => None,
        }
    }

    /// The value as a bare identifier (`persistent`, `none`, `f32`), if it is one.
    pub fn word(&self) -> Option<String> {
        match &self.value {
            Expr::Path(path) if path.qself.is_none() => {
                path.path.get_ident().map(|i| i.unraw().to_string())
            }
            _ => None,
        }
    }
}

/// Every argument, in the order written (a trailing comma is allowed).
pub struct Args(pub Vec<Arg>);

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let list = Punctuated::<Arg, Token![,]>::parse_terminated(input)?;
        Ok(Args(list.into_iter().collect()))
    }
}
