import { ValidationPipe } from '@nestjs/common';
import { flattenValidationErrors } from '../config/validation-messages';
import { validationFailed } from './api-error';

/** The global pipe: whitelisted DTOs, no implicit type conversion, the API's 400 body. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    forbidUnknownValues: true,
    exceptionFactory: (errors) => validationFailed(flattenValidationErrors(errors)),
  });
}
